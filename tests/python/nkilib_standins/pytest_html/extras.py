"""Stand-in for pytest_html.extras: an extra is a plain dict."""


def url(content, name="URL"):
    return {"name": name, "format_type": "url", "content": content}


def text(content, name="Text"):
    return {"name": name, "format_type": "text", "content": content}
