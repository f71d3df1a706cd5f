"""Where coral_torch installs: the python's own site directory when it lies under the prefix
(Debian's /usr/local/lib/python3.X/dist-packages for prefix /usr/local, which that python
searches), else <prefix>/lib/python3.X/site-packages, to be put on PYTHONPATH."""
import sys
import sysconfig

prefix = sys.argv[1].rstrip("/")
own = sysconfig.get_paths()["platlib"]
if own.startswith(prefix + "/"):
    print(own)
else:
    print(sysconfig.get_path("platlib", "posix_prefix", vars={"base": prefix, "platbase": prefix}))
