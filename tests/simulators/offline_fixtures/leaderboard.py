def top_players(scores, n=3):
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return [name for name, points in ranked[:n]]
