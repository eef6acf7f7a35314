"""What the tests need from the machine: in CI (CI=true) every dependency
.ci/run installs is there, so a test that lacks one fails instead of being
skipped."""

import os
import unittest


def in_ci():
    return os.environ.get("CI") == "true"


def need(case, reason):
    """Skip the test case (unittest.TestCase), or fail it in CI."""
    if in_ci():
        case.fail("in CI: " + reason)
    case.skipTest(reason)


def need_if(missing, reason):
    """A decorator: when missing, skip the test, or fail it in CI."""

    def wrap(f):
        if not missing:
            return f

        def test(self, *a, **kw):
            need(self, reason)

        test.__name__ = f.__name__
        test.__doc__ = f.__doc__
        return test

    return wrap


__all__ = ["in_ci", "need", "need_if", "unittest"]
