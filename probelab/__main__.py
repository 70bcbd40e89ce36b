from probelab.cli import main

main()
