from an5dpy.cli.main import main

raise SystemExit(main())
