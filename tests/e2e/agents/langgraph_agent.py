"""A weather agent as a LangGraph graph: a model node on langchain-openai's ChatOpenAI and a
tool node, looping until the model answers (two model turns).

ChatOpenAI's client takes its key and base URL from OPENAI_API_KEY and OPENAI_BASE_URL (the
openai SDK reads the latter), and keeps the SDK's own retries.
"""

from __future__ import annotations

from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return "sunny" if city == "Paris" else "unknown"


model = ChatOpenAI(model="gpt-4o-mini").bind_tools([get_weather])


def call_model(state: MessagesState) -> MessagesState:
    return {"messages": [model.invoke(state["messages"])]}


def main() -> None:
    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode([get_weather]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition, ["tools", END])
    graph.add_edge("tools", "model")
    agent = graph.compile()
    state = agent.invoke(
        {"messages": [HumanMessage("What is the weather in Paris?")]}, {"recursion_limit": 8}
    )
    print(state["messages"][-1].content)


if __name__ == "__main__":
    main()
