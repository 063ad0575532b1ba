from kprof.cli import entry

entry()
