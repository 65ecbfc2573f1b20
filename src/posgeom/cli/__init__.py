"""The ``posgeom`` command line: thin wrappers that parse, call the library and print."""
