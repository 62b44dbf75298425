"""The burst wing: the concurrent exhaustion of a key's quota (spender), its own HTTP/1.1
transport, and the sending of a wave from several processes."""
