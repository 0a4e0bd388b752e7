"""Differential state machines for agent-framework storage seams.

Each module drives one framework's seam with random operation sequences
(Hypothesis) against the framework's own reference implementation and a
candidate implementation side by side, comparing every answer. No framework
ships such a suite; anyone with another implementation of the same seam can
run these. A module imports its framework only when it is imported.

- :mod:`.openai_agents`: the Agents SDK ``Session`` vs ``SQLiteSession``.
- :mod:`.pydantic_ai`: a message-history store vs an in-memory list.
- :mod:`.google_adk`: an ADK ``BaseSessionService`` vs ``InMemorySessionService``.
"""
