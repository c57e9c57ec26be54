print("sofa")
