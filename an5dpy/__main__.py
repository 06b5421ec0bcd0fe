from an5dpy.cli import main

raise SystemExit(main())
