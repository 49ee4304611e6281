"""One module per `scv` subcommand."""
