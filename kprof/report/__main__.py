"""``python -m kprof.report JOB PARENT_PID``: one run of templates in its own process (see
:func:`kprof.report._run_parallel`)."""

import sys

from kprof.lifetime import die_with_parent
from kprof.report import _worker, skip_iri_grammar

if __name__ == "__main__":
    skip_iri_grammar()  # 1.3 s of CPU less in this process's import of papermill
    die_with_parent(
        int(sys.argv[2]) if len(sys.argv) > 2 else None
    )  # a killed report takes its workers along
    sys.exit(_worker(sys.argv[1]))
