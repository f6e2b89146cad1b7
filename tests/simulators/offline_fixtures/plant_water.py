def watering_schedule(plants, temperature):
    schedule = []
    for plant in plants:
        days = 7
        if plant['type'] == 'succulent':
            days = 14
        elif plant['type'] == 'fern':
            days = 3
        if temperature > 30:
            days = max(1, days - 2)
        schedule.append((plant['name'], days))
    return sorted(schedule, key=lambda p: p[1])
