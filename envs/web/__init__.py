"""Web tasks on a real local site: a generated shop and encyclopedia served over HTTP on loopback,
a text browser for agents, and the `rlvr/WebShop-v0` and `rlvr/WikiQA-v0` envs.
See docs/multiturn.md."""
