"""``python -m gitvault``."""

from gitvault.cli.main import main

if __name__ == "__main__":
    main()
