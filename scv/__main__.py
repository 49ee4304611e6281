from scv.cli import main

main(prog_name="scv")
