def shipping_cost(weight_kg, express=False):
    if weight_kg <= 0:
        raise ValueError("weight must be positive")
    if weight_kg <= 2:
        cost = 4.5
    elif weight_kg <= 10:
        cost = 9.0
    else:
        cost = 9.0 + 0.75 * (weight_kg - 10)
    if express:
        cost *= 1.6
    return round(cost, 2)
