def gym_fee(visits, plan):
    base = {'basic': 20, 'plus': 35, 'pro': 50}.get(plan, 25)
    if plan == 'basic' and visits > 12:
        base += 2 * (visits - 12)
    if visits == 0:
        return round(base * 0.5, 2)
    return float(base)
