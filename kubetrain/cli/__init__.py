"""The ``kubetrain`` command line: the only layer that reads argv, prints or exits."""
