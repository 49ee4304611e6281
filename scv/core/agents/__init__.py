"""What both sides know of the delegated agents: the catalog of agent descriptors, the scrubbed
environment an agent process starts with, and the validators of an agent call's options."""
