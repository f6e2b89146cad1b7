def letter_grade(score):
    if score >= 93:
        return 'A'
    elif score >= 85:
        return 'B'
    elif score >= 70:
        return 'C'
    else:
        return 'F'
