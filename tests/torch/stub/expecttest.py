"""Stand-in for the expecttest package (not packaged by Debian), which torch's common_utils
imports for its TestCase base class. The distributed suite never compares expect-files; a test
that does is skipped, with a reason, rather than silently accepted."""
import unittest

ACCEPT = False


class TestCase(unittest.TestCase):
    def assertExpectedInline(self, actual, expect, skip=0):  # noqa: N802 (expecttest's name)
        raise unittest.SkipTest("expecttest stand-in: inline expectations are not supported")
