from typing import Dict, List, Optional


def average_rating(ratings: List[int], weights: Optional[Dict[str, float]] = None, label: str = "avg") -> float:
    if not ratings:
        return 0.0
    total = sum(ratings)
    return round(total / len(ratings), 1)
