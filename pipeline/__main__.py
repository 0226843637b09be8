from pipeline.main import main

raise SystemExit(main())
