"""Where coral_torch installs: a directory under <prefix>/lib that this python searches (Debian:
/usr/local/lib/python3.X/dist-packages for /usr/local, /usr/lib/python3/dist-packages for /usr),
else <prefix>/lib/python3.X/site-packages, which the user puts on PYTHONPATH."""
import sys
import sysconfig

prefix = sys.argv[1].rstrip("/")
for scheme in [sysconfig.get_default_scheme()] + list(sysconfig.get_scheme_names()):
    try:
        path = sysconfig.get_path("platlib", scheme)
    except KeyError:
        continue
    if path.startswith(prefix + "/lib/") and path in sys.path:
        print(path)
        break
else:
    print(sysconfig.get_path("platlib", "posix_prefix", vars={"base": prefix, "platbase": prefix}))
