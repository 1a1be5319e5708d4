#!/bin/sh
# python-tap.sh SRCDIR BUILDDIR TEST.py: run one of tests/python/ against this build's module
# (_gpar in BUILDDIR/python/.libs, the gpar package in SRCDIR/python, libgpar in
# BUILDDIR/.libs) with $PYTHON; the test speaks TAP itself.
srcdir=$1 builddir=$2 test=$3
PYTHONPATH="$builddir/python/.libs:$srcdir/python:$srcdir/tests/python${PYTHONPATH:+:$PYTHONPATH}"
LD_LIBRARY_PATH="$builddir/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
PYTHONDONTWRITEBYTECODE=1
GPAR_BUILDDIR=$builddir  # where tests find this build's programs (tools/gpar-bench)
export PYTHONPATH LD_LIBRARY_PATH PYTHONDONTWRITEBYTECODE GPAR_BUILDDIR
exec "${PYTHON:-python3}" "$test"
