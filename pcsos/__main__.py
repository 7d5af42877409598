from pcsos.cli import entry

entry()
