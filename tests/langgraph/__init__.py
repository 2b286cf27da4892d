"""The LangGraph store integration (`reference.integrations.langgraph`): against LangGraph's `InMemoryStore`, in a
compiled graph, persisted, async, and with bad input."""
