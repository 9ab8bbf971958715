"""Datasets: designers' named selections of episodes across their studies, and their splits."""
