"""The test kit: the helpers every suite shares, written once (see README.md in this directory)."""
