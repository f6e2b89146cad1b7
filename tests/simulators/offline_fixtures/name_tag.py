def format_name_tag(first, last, title=None):
    first = first.strip().capitalize()
    last = last.strip().upper()
    if title:
        return f"{title}. {last}, {first}"
    return f"{last}, {first}"
