"""The exit codes every opsctl and probe command ends with (the README's tour of the commands):
one home, here at the bottom, since a tray gets `probes` alone and opsctl imports it."""

EXIT_OK = 0  # done: pass (or, for commands that judge nothing, done)
EXIT_FAILED = 1  # done: something failed its check
EXIT_USAGE = 2  # bad input: nothing was run
EXIT_INCOMPLETE = 3  # not everything could be judged: unreachable, crashed, timed out
