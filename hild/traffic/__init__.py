"""Other ships around the boat: targets, their motion by route, course or encounter, their
COLREG behaviour stepped in the compiled core with the own ship, and what they report."""
