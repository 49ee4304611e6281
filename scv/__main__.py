from scv.cli import main

main()
