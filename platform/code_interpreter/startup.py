# The code-interpreter-v1 template's IPython startup: every Python kernel runs this file at start
# (exec_files in /etc/ipython/ipython_kernel_config.py, which templates.c writes into the
# template's etc layer). IPython puts this file's directory on sys.path while it runs, so the
# modules next to it import here; nothing stays in the user's namespace. The formats it installs,
# E2B's (template/startup_scripts @ 7df1757, e2b-dev/code-interpreter): abx_formats.py.
import abx_formats as _abx_formats

_abx_formats.install(get_ipython())  # noqa: F821 - IPython's startup namespace has it
del _abx_formats
