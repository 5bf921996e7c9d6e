"""`python -m bench`: run every benchmark."""

from bench import build_noop

if __name__ == "__main__":
    build_noop.main()
