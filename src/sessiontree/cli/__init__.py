"""The command-line face: argv, environment, cwd and the terminal live only here."""
