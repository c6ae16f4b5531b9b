# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""Tests of the kvtier Python package (see _support for which need a tier)."""
