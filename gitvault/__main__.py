"""``python -m gitvault``."""

from gitvault.fast import main

if __name__ == "__main__":
    main()
