# IPython kernel configuration of the code-interpreter-v1 template, read by every Python kernel
# from /etc/ipython (one of IPython's system config dirs, whichever user the kernel runs as;
# templates.c writes it into the template's etc layer). As E2B's template/ipython_kernel_config.py
# @ 7df1757 (e2b-dev/code-interpreter): plain tracebacks and untruncated sequences in text/plain.
# Its startup scripts (~/.ipython/profile_default/startup there) are startup.py here.
c = get_config()  # noqa: F821 - traitlets' config loader provides it

c.InteractiveShell.colors = "NoColor"
c.PlainTextFormatter.max_seq_length = 0
c.InteractiveShellApp.exec_files = ["/opt/abx/code-interpreter/startup.py"]
