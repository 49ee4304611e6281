"""Configuration: the user's and the project's `config.toml` decoded into typed Structs (`load`),
the `[agents]` settings schema (`agents`) and the `[web]` settings (`web`), and the effective
configuration shown by `scv config show` (`view`)."""
