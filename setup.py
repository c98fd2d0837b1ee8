import setuptools
from setuptools import setup

# The license as an SPDX expression (PEP 639) where setuptools knows one (>= 77); older ones, used by builds without
# isolation on machines that have them, get the same words in the older field.
if int(setuptools.__version__.split(".")[0]) >= 77:
    setup(license_expression="MIT")
else:
    setup(license="MIT")
