from gitflow_agents.git_agent_review import gitflow_agents_main

raise SystemExit(gitflow_agents_main())
