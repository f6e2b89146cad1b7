def reading_summary(log):
    pages = {}
    for entry in log:
        title, n = entry['title'], entry.get('pages', 0)
        if n > 0:
            pages[title] = pages.get(title, 0) + n
    if not pages:
        return {'total': 0, 'top': None}
    top = max(sorted(pages), key=lambda t: pages[t])
    return {'total': sum(pages.values()), 'top': top}
