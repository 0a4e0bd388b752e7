from memory_core.cli import main

main()
