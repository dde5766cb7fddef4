"""What a tool is and what it answers, below every package that holds tools (the supervisor, memory,
the agent), so none of them imports another for the type."""
