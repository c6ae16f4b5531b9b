# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""The version of this package: the kvtier release it belongs to.

The release's version has one home, PACKAGE_VERSION in dkms.conf; this
copy is what an installed package reports without reading the tree, and
tests/test_host.py checks that both agree with kvtier_version(3).
"""

__version__ = "0.1.0"
