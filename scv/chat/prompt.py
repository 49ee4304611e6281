"""The system prompt's *Chat channel* section, for a session a chat bridge started."""

from scv.chat.channel import MAX_REPLY_FILES, ChatChannel


def chat_section(channel: ChatChannel) -> str:
    kept_for = (f"they are deleted after {channel.keep_days} days" if channel.keep_days
                else "they are deleted after a while")
    lines = [
        "## Chat channel",
        f"You are in the account owner's direct {channel.product} chat, through SCV's chat bridge: each reply is "
        "sent to them as chat messages. Chat apps show plain text, so keep replies short and conversational, "
        "without headings or tables, and answer in the language the owner writes in.",
        f"Files the owner sends arrive as paths in the chat media folder {channel.media}; {kept_for}"
        + (", unless you keep one with `chat_keep`." if channel.log else "."),
        f"To send a file, call `chat_attach` once per file (at most {MAX_REPLY_FILES} per reply); it arrives after "
        "your reply text, and a caption goes into the text as `<name>: <caption>`. It refuses SCV's own folder, "
        "credentials and keys, host secrets and secret-like names; tell the owner when it refuses rather than "
        "copying the file somewhere else to get around it.",
    ]
    if channel.log:
        lines.append(
            "`chat_history` searches and reads this chat's earlier messages (a new episode starts after the owner "
            "sends /new or after 8 hours without messages): use it when the owner refers to something said or sent "
            f"before. `chat_keep` keeps a file the owner sent for good, moving it to {channel.kept}; do it when they "
            "ask to keep or save one.")
    return "\n".join(lines)
