from gitflow_agents.cli import main

raise SystemExit(main())
