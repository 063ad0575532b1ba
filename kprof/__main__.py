from kprof.cli import entry

if __name__ == "__main__":  # guarded: worker processes (spawn/forkserver) re-import __main__
    entry()
