SERVICE_RATES = {'excellent': 0.2, 'good': 0.15, 'poor': 0.05}


def tip_amount(bill, service, split=1):
    rate = SERVICE_RATES.get(service, 0.1)
    tip = bill * rate
    return round(tip / split, 2)
