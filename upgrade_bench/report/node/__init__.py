"""The node check: each measured node's figures against a healthy node of its GPU kind (numbers; the words are page/node.py)."""
