"""memory-core behind agent frameworks (optional extras).

One module per framework, each imported only when used, so the core never
imports a framework:

- :mod:`memory_core.integrations.openai_agents` (``memory-core[openai-agents]``):
  a Session for the OpenAI Agents SDK, plus recall and working-memory tools.
- :mod:`memory_core.integrations.pydantic_ai` (``memory-core[pydantic-ai]``):
  a message-history store for Pydantic AI, plus tools.
- :mod:`memory_core.integrations.google_adk` (``memory-core[google-adk]``):
  a session service and a memory service for Google ADK.

Shared mapping (every integration): a framework's conversation is a thread,
its user is the thread's resource, each framework record (item, message,
event) is one message whose ``content`` holds the record's exact JSON and
whose ``type`` names the format (``"openai-agents/item"`` ...). Thread ids
are scoped per user (``<namespace>:<user>:<conversation>``), so users pick
their own conversation ids. Shared rules live in ``_threads`` (ids, the one
meaning of a history ``limit``, the current turn) and ``_tools`` (recall
under the Memory's semantic-recall settings, of user and assistant messages,
leaving out the current turn, under a relevance floor).
"""
